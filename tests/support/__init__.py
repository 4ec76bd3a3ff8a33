"""What the tests share, one module per subject: ``examples`` (the bundled definitions as
plans), ``stack`` (small definitions and the Pulumi mocks), ``checks`` (a definition that
triggers no rule, and cases that trigger one), ``node`` (the agent's fake nodes: runners, device
trees, a Context rooted in the test's directory) and ``workload`` (a pool as acceptance sees
it, simulated)."""
