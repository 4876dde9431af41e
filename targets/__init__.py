"""The bundled targets: specs (``NAME.toml``) and the agents they drive (``chaos.bundled.targets``)."""
