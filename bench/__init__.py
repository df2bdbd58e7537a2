"""andal's benchmark suite: ``python -m bench.run [--quick] [--only W1,W3] [--reps N]``.

Every workload runs the raw-SQL baseline beside andal (and the peers where they apply) in one
invocation against one server: only ratios measured in the same run mean anything.
"""
