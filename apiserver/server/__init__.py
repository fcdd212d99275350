"""Assembly: the ASGI app, TLS material, kubeconfig output and the uvicorn runner."""
