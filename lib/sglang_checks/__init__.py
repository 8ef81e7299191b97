"""Controller-side checks of inventory values, in plain Python (no Ansible): values.refusals()."""
