"""SGLang's /metrics under real traffic: one table of alerts and panels (catalog.py) rendered to a Prometheus scrape
configuration, its rules and a Grafana dashboard (render.py) for the inventory's servers and routers (targets.py),
and the levers read back from a window of traffic (levers.py, from samples.py's readings)."""
