"""Storing what was measured: the run dataset's schema, the Parquet dataset and its manifest, the platform files as frames."""
