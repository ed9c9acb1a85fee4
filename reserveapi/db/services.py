# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""Heartbeat rows of the running processes (``services``)."""

import datetime

from oslo_utils import timeutils
import sqlalchemy as sa

from reserveapi.db import base
from reserveapi.db import models
from reserveapi.db import records

FORGOTTEN_AFTER = datetime.timedelta(days=1)
"""Rows expired this long ago are deleted: nobody asks about them."""


@base.retrying()
def beat(holder, kind, host, pid, release, schema_head, started_at,
         lifetime):
    """Record that the process ``holder`` is alive for ``lifetime``
    seconds more.

    :raises: DatabaseUnavailable, DatabaseBusy
    """
    now = timeutils.utcnow()
    service = models.Service
    with base.writer() as session:
        renewed = session.execute(
            sa.update(service).where(service.holder == holder).values(
                seen_at=now, expires_at=now + datetime.timedelta(
                    seconds=lifetime)),
            execution_options={'synchronize_session': False}).rowcount
        if renewed:
            return
        session.execute(sa.delete(service).where(
            service.expires_at < now - FORGOTTEN_AFTER))
        session.execute(sa.insert(service).values(
            holder=holder, kind=kind, host=host, pid=pid, release=release,
            schema_head=schema_head, started_at=started_at, seen_at=now,
            expires_at=now + datetime.timedelta(seconds=lifetime)))


@base.retrying()
def remove(holder):
    """The process ``holder`` stopped.

    :raises: DatabaseUnavailable, DatabaseBusy
    """
    with base.writer() as session:
        session.execute(sa.delete(models.Service).where(
            models.Service.holder == holder))


def live():
    """Every process whose heartbeat has not expired, oldest first.

    :raises: DatabaseUnavailable, DatabaseBusy
    """
    service = models.Service
    with base.reader() as session:
        rows = session.execute(
            sa.select(service).where(
                service.expires_at >= timeutils.utcnow()).order_by(
                    service.started_at, service.id)).scalars()
        return [records.ServiceRecord(
            kind=row.kind, host=row.host, pid=row.pid, release=row.release,
            schema_head=row.schema_head, started_at=row.started_at,
            seen_at=row.seen_at) for row in rows]
