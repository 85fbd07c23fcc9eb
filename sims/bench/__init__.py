"""Microbenchmarks that characterise a processor: STREAM-like triad and an in-cache FMA peak."""
