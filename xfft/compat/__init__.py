"""Front-ends with other libraries' names and layouts, running on xfft: :mod:`xfft.compat.jaxdecomp`."""
