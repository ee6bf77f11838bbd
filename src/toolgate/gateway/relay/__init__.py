"""What the gateway relays between clients and backends: a call's side channels (progress,
cancellation, logs, input requests), prompts, resources, completions and subscriptions,
and who may see which. Imports the backends and the config, never the ingress.
"""
