"""Checks of the inventory made on the controller before any host is touched (plain Python, no connection).

inputs: one host's variables against every role's argument specs, unknown names, and the release rules.
fleet: what only the whole run can tell: sglang_serial's batches, and servers across nodes.
urls: the one derivation of the addresses the roles and the proof use.
"""
