"""The command-line tools behind ``python -m jaxlite <command>`` (demo; lint and doctor
later).  Layer: top -- tools use the public jaxlite API and the monitoring events only."""
