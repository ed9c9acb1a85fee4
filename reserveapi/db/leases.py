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

"""Leases: a row held by one process until a time, taken, renewed and
dropped the same way for every leased table (the inventory sync, the
claims to clear in Ironic, the mirror's hosts).

A lease is its holder and the time it lapses unless renewed; a process
that dies stops renewing, and the next taker finds it expired. Taking,
renewing and dropping are each one conditional UPDATE, so the database
decides between processes racing for a row: the first to commit holds
it.

The columns are ``leased_by`` and ``leased_until`` (migration 0014;
version 1.0.0 called them ``claimed_by`` and ``claimed_until``): "claim"
means only Ironic's ``instance_uuid`` on a node, never a lease.
"""

import sqlalchemy as sa

# The lease's columns in every leased table: its holder, and when it
# lapses. Both are set or cleared together.
_HOLDER = 'leased_by'
_UNTIL = 'leased_until'


class Lease:
    """The lease on the rows of ``model``, a table with the lease's
    columns."""

    def __init__(self, model):
        self.model = model
        self.holder = getattr(model, _HOLDER)
        self.until = getattr(model, _UNTIL)

    def free(self, now, holder=None):
        """The condition of a row ``holder`` may take at ``now``: unheld,
        expired, or already its own (with no ``holder``: any new
        process)."""
        free = [self.holder.is_(None), self.until < now]
        if holder is not None:
            free.append(self.holder == holder)
        return sa.or_(*free)

    def held_by(self, holder):
        """The condition of a row ``holder`` holds, expired or not: only
        the holder renews or drops its lease."""
        return self.holder == holder

    @staticmethod
    def values(holder=None, until=None):
        """The columns' values for a lease to ``holder`` until ``until``;
        by default no lease, taken from whoever held it."""
        return {_HOLDER: holder, _UNTIL: until}

    def hand(self, row, holder, until):
        """Give ``row`` (a loaded object) to ``holder`` until ``until``,
        or to nobody, over whoever held it."""
        for column, value in self.values(holder, until).items():
            setattr(row, column, value)

    def take(self, session, holder, until, now, *where, **values):
        """Lease the rows ``where`` selects that are free for ``holder``
        at ``now`` until ``until``, writing ``values`` with it (renewing
        its own); how many it took."""
        return session.execute(
            sa.update(self.model).where(*where, self.free(now, holder))
            .values(**self.values(holder, until), **values)).rowcount

    def renew(self, session, holder, until, *where):
        """Extend ``holder``'s lease on the rows ``where`` selects to
        ``until``; how many it still held."""
        return session.execute(
            sa.update(self.model).where(*where, self.held_by(holder))
            .values({_UNTIL: until})).rowcount

    def drop(self, session, holder, *where, **values):
        """End ``holder``'s lease on the rows ``where`` selects, writing
        ``values`` with it; how many it still held."""
        return session.execute(
            sa.update(self.model).where(*where, self.held_by(holder))
            .values(**self.values(), **values)).rowcount

    def count(self, session, now):
        """``(alive, dead)``: rows whose lease its holder still renews,
        and rows whose lease lapsed with a holder recorded (a process
        that stopped without letting go; the next taker clears it)."""
        held = self.holder.is_not(None)
        alive, dead = session.execute(sa.select(
            sa.func.sum(sa.case((sa.and_(held, self.until >= now), 1),
                                else_=0)),
            sa.func.sum(sa.case((sa.and_(held, self.until < now), 1),
                                else_=0)))).one()
        return int(alive or 0), int(dead or 0)
