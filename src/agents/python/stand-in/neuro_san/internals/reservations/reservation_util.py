"""Axon's stand-in for neuro-san's ReservationUtil: one temporary network deployed from a coded tool, waited for."""


class ReservationUtil:
    # pylint: disable=too-many-arguments,too-many-positional-arguments
    @staticmethod
    async def wait_for_one(args, agent_spec, lifetime_in_seconds, prefix="", external_networks=None, mcp_servers=None):
        """(the Reservation, None) once the network is served, or (None, what went wrong)."""
        reservationist = args.get("reservationist")
        if reservationist is None:
            return None, 'There is no reservationist: the agent spec must allow reservations ("allow": {"reservations": true}).'
        reservation = await reservationist.reserve(lifetime_in_seconds=lifetime_in_seconds, prefix=prefix)
        try:
            async with reservationist.validate_with(external_networks=external_networks, mcp_servers=mcp_servers):
                deployed = await reservationist.deploy({reservation: agent_spec}, confirmation=True)
        except ValueError as error:
            return None, f"{error}"
        await deployed.wait()
        return reservation, None
