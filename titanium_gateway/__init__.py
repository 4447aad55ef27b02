"""titanium-gateway: Gateway API and Ingress controller for the Titanium reverse proxy."""

__version__ = "0.1.0"
