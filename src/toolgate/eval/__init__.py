"""``toolgate eval``: measure what each disclosure strategy does for a real agent.

A real agent loop (a provider's official SDK) over ``toolgate serve CONFIG`` once per
strategy, judged per task, reported per strategy. The top edge beside ``toolgate.cli``:
it imports the gateway, the demo and ``toolgate.client``; nothing in toolgate imports it.
"""
