"""One module per suite app, each defining ``APP`` (a ``benchmarks.suite.SuiteApp``)."""
