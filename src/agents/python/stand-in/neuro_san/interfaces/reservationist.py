"""Axon's stand-in for neuro-san's Reservationist: what a coded tool whose spec allows reservations gets as
args["reservationist"]."""
from axon_runner import AxonReservationist as Reservationist  # noqa: F401
