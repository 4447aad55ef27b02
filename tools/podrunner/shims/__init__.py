"""Entry points of the local images: each turns an image's command line into a local program."""
