"""Checks of the inventory made on the controller before any host is touched (plain Python, no connection).

inputs: one host's variables against every role's argument specs, unknown names, and the release rules.
values: every value that reaches a file, path, unit, env file, argv or URL (kinds, extra_args, flags).
fleet: what only the whole run can tell: sglang_serial's batches, and servers across nodes.
planspec: the planner's spec for a host (the one derivation, used by plan.yml and the check phase).
urls: the one derivation of the addresses the roles and the proof use.
"""
