"""Reports on the controller: the plan as a picture, and one report per run and host.

picture.curves(spec, plan, measured) -> the data drawn (from the planner's own forward formula)
picture.draw(data, title) -> (PNG bytes, matplotlib Figure)
report.write_run_report(facts, root, stamp, generated_at) -> reports/<host>/<stamp>/ with report.{json,html}
`python -m sglang_report plan` is what playbooks/plan.yml calls (facts as JSON on stdin); the role's report is the
sglang_run_report action's.
"""
