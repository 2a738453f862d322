"""Axon's stand-in for neuro-san's Reservation: the name of a temporary network, reserved for a lifetime."""
from axon_runner import AxonReservation as Reservation  # noqa: F401
