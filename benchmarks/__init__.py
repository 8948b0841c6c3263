"""dsctl's benchmarks: ``python -m benchmarks NAME [ARGS]`` runs one, ``python -m benchmarks`` lists them.

Every benchmark is a module here with a ``main(argv)``; ``harness`` holds what they share.
Results go to ``benchmarks/results/<name>.json``.
"""
