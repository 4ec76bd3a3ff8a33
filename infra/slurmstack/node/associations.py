"""accounting-apply (head): the definition's accounts, users and QoS, applied with sacctmgr.

Observe (what slurmdbd holds for this cluster: sacctmgr_text), decide (a pure function:
association_plan.decide), act (each command once, logged; a failed one is reported and tried
again at the next apply). Running it twice changes nothing the second time.

Ownership: slurmstack removes only what it created. It records each QoS, account and
user-in-account it adds in a state file on the head's state volume (accounting.json's
owned_state, beside the database, so a replacement head keeps it) and removes an object only
when that record names it and the definition no longer does. root, normal, and whatever an
operator made by hand are never removed; an object the definition names that existed before
is brought to the definition's settings but stays the operator's. An object in the record that
someone removed by hand leaves the record.
"""

from __future__ import annotations

import json
from typing import Any

from .accounting_db import AccountingDb, AccountingOff
from .association_plan import Decision, decide, member_key
from .base import AgentError, log, write_atomic
from .sacctmgr_text import (
    ASSOC_FIELDS,
    QOS_FIELDS,
    Observed,
    parse_associations,
    parse_pairs,
    parse_qos,
)

SACCTMGR = "sacctmgr"
OWNED_KINDS = ("qos", "accounts", "members")


class Associations(AccountingDb):
    def sacctmgr(self, *args: str) -> str:
        return self._ok(SACCTMGR, *args)

    def observe(self, cluster: str) -> Observed:
        observed = Observed()
        observed.qos = parse_qos(self.sacctmgr("-n", "-P", "show", "qos", f"format={QOS_FIELDS}"))
        where = ("where", f"cluster={cluster}", f"format={ASSOC_FIELDS}")
        parse_associations(self.sacctmgr("-n", "-P", "show", "assoc", *where), observed)
        users = self.sacctmgr("-n", "-P", "show", "user", "format=user,defaultaccount")
        observed.default_accounts = parse_pairs(users)
        accounts = self.sacctmgr("-n", "-P", "show", "account", "format=account,description")
        observed.descriptions = parse_pairs(accounts)
        return observed

    def owned(self, path: str, observed: Observed) -> dict[str, list[str]]:
        """slurmstack's record of what it created, less what is gone from slurmdbd."""
        state = self.path(path)
        data: dict[str, list[str]] = json.loads(state.read_text()) if state.exists() else {}
        present = {
            "qos": set(observed.qos),
            "accounts": set(observed.accounts),
            "members": {member_key(u, a) for u, a in observed.members},
        }
        return {kind: [k for k in data.get(kind, []) if k in present[kind]] for kind in OWNED_KINDS}

    def save_owned(self, path: str, owned: dict[str, list[str]]) -> None:
        data = {kind: sorted(set(owned.get(kind, []))) for kind in OWNED_KINDS}
        text = json.dumps(data, indent=2, sort_keys=True) + "\n"
        write_atomic(self.path(path), text.encode(), 0o600)

    def ensure_cluster(self, cluster: str) -> None:
        """slurmctld registers its cluster at its first start; adding it here too lets this run
        first (sacctmgr refuses associations on an unknown cluster)."""

        def known() -> bool:
            return cluster in self.sacctmgr("-n", "-P", "show", "cluster", "format=cluster").split()

        if not known():
            added = self.sh(SACCTMGR, "-i", "add", "cluster", cluster, check=False)
            # slurmctld may have registered it in between: that is as good.
            if added.returncode != 0 and not known():
                raise AgentError(f"cannot add cluster {cluster}: {added.stderr.strip()}")

    def accounting_apply(self, dry_run: bool = False) -> dict[str, Any]:
        """Apply accounting.json's QoS, accounts and users; returns what was done, what was kept
        and why, and what failed (with sacctmgr's last line)."""
        try:
            desired = self.accounting_config()
        except AccountingOff as off:
            log(f"accounting-apply: accounting is off ({off}): nothing to do")
            return {"enabled": False}
        cluster, state = str(desired["cluster"]), str(desired["owned_state"])
        if not dry_run:
            self.ensure_cluster(cluster)
        observed = self.observe(cluster)
        owned = self.owned(state, observed)
        decision = decide(desired, observed, owned)
        if dry_run:
            return self._result([a.what for a in decision.actions], decision, {})
        done: list[str] = []
        failed: dict[str, str] = {}
        for action in decision.actions:
            result = self.sh(SACCTMGR, "-i", *action.args, check=False)
            if result.returncode != 0:
                said = f"{result.stdout}\n{result.stderr}".split("\n")
                said = [line.strip() for line in said if line.strip()]
                failed[action.what] = "; ".join(said) or f"exit {result.returncode}"
                log(f"accounting-apply: {action.what} failed: {failed[action.what]}")
                continue
            log(f"accounting-apply: {action.what}")
            done.append(action.what)
            if action.own is not None:
                owned[action.own[0]].append(action.own[1])
            for kind, key in action.disown:
                owned[kind] = [k for k in owned[kind] if k != key]
            self.save_owned(state, owned)  # after each command: a crash loses nothing
        self.save_owned(state, owned)
        return self._result(done, decision, failed)

    @staticmethod
    def _result(done: list[str], decision: Decision, failed: dict[str, str]) -> dict[str, Any]:
        for what, why in decision.kept.items():
            log(f"accounting-apply: kept {what}: {why}")
        return {"enabled": True, "done": done, "kept": decision.kept, "failed": failed}

    def require_accounting(self) -> dict[str, Any]:
        try:
            return self.accounting_config()
        except AccountingOff as off:
            raise AgentError(f"accounting is off ({off})") from None
