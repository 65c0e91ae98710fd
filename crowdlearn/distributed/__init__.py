"""Fitting on a cluster: the Dask backend of Dawid--Skene (``crowdlearn[dask]``)."""
