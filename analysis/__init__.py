"""hetval's predicting side: models, metrics, dataset I/O, Dask validation, report and CLI."""
