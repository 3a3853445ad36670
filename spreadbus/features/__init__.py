"""Capabilities, one package each; :mod:`spreadbus.features.registry` lists those this build
runs."""
