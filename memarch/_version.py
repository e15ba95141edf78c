"""The package version, in one place the layers below `memarch` can import without loading it all."""
__version__ = "0.1.0"
