"""The head node's accounting files (slurmstack.plan.accounting decides, these carry it):
accounting.json (the contract's AccountingConfig, which the agent's accounting steps read),
slurmdbd.conf without its password, slurmdbd's unit drop-in, and for the local database
MariaDB's settings and drop-in. slurm.conf's accounting keys are rendered with slurm.conf
(slurmstack.render.slurm)."""

from __future__ import annotations

from slurmstack.contract import (
    ACCOUNTING_CONFIG_PATH,
    MARIADB_CONF_PATH,
    MARIADB_DROPIN_PATH,
    SLURMDBD_CONF_RENDERED_PATH,
    SLURMDBD_DROPIN_PATH,
    AccountingAccount,
    AccountingConfig,
    AccountingDatabase,
    AccountingQos,
    AccountingUser,
)
from slurmstack.plan import (
    INNODB_LOCK_WAIT_TIMEOUT,
    INNODB_LOG_FILE_MIB,
    MAX_ALLOWED_PACKET_MIB,
    AccountingPlan,
    ClusterPlan,
    accounting_plan,
)
from slurmstack.render.templates import render_template
from slurmstack.spec import QosSpec

from ..contract import dump_document


def _qos(qos: QosSpec) -> AccountingQos:
    return AccountingQos(
        name=qos.name,
        description=qos.description or qos.name,
        priority=qos.priority,
        max_wall_minutes=qos.max_wall_minutes,
        max_jobs_per_user=qos.max_jobs_per_user,
        max_tres_per_user=dict(sorted(qos.max_tres_per_user.items())),
        max_tres_per_job=dict(sorted(qos.max_tres_per_job.items())),
        grp_tres=dict(sorted(qos.grp_tres.items())),
    )


def _enabled_config(acct: AccountingPlan) -> AccountingConfig:
    db = acct.database
    return AccountingConfig(
        cluster=acct.cluster,
        enabled=True,
        database=AccountingDatabase(
            type=db.type,
            host=db.host,
            port=db.port,
            name=db.name,
            user=db.user,
            password_secret=db.password_secret,
        ),
        qos=tuple(_qos(q) for q in acct.qos),
        accounts=tuple(
            AccountingAccount(
                name=a.name,
                description=a.description or a.name,
                parent=a.parent,
                fairshare=a.fairshare,
                qos=acct.effective_qos(a),
                default_qos=acct.effective_default_qos(a),
                grp_tres=dict(sorted(a.grp_tres.items())),
            )
            for a in acct.accounts_parents_first
        ),
        users=tuple(
            AccountingUser(name=user, default_account=default, accounts=accounts)
            for user, default, accounts in acct.users
        ),
        pools=acct.prices,
    )


def accounting_config(plan: ClusterPlan) -> AccountingConfig:
    """What the head node's agent needs for accounting-db, accounting-apply and the usage
    report; with accounting off, just that it is off."""
    acct = accounting_plan(plan)
    if acct is None:
        return AccountingConfig(cluster=plan.name, enabled=False)
    return _enabled_config(acct)


def accounting_files(plan: ClusterPlan) -> dict[str, str]:
    """Absolute node path -> text: the head node's accounting files. accounting.json always
    (the agent learns from it that accounting is off); slurmdbd's configuration (without its
    password) and unit drop-in when it is on; MariaDB's when the database is the local one."""
    files = {ACCOUNTING_CONFIG_PATH: dump_document(accounting_config(plan))}
    accounting = accounting_plan(plan)
    if accounting is None:
        return files
    files[SLURMDBD_CONF_RENDERED_PATH] = render_template(
        "slurm/slurmdbd.conf.j2", plan=plan, accounting=accounting
    )
    files[SLURMDBD_DROPIN_PATH] = render_template(
        "systemd/slurmdbd-dropin.conf.j2", plan=plan, accounting=accounting
    )
    if accounting.database.local:
        files[MARIADB_CONF_PATH] = render_template(
            "mariadb/slurmstack.cnf.j2",
            plan=plan,
            accounting=accounting,
            log_file_mib=INNODB_LOG_FILE_MIB,
            lock_wait_timeout=INNODB_LOCK_WAIT_TIMEOUT,
            max_allowed_packet_mib=MAX_ALLOWED_PACKET_MIB,
        )
        files[MARIADB_DROPIN_PATH] = render_template("systemd/mariadb-dropin.conf.j2", plan=plan)
    return files
