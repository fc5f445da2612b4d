"""Counting a fan-out's branches on its root: registering them before they are sent, counting each
ending once, and ending the root with the last (docs/status.md, "Counting branches").

Every branch (child envelope) is registered on the **root** task before it is sent (`branch_ids`),
and every branch that ends is added to the root's `done_ids` once (a string set, so a redelivered
x-sink cannot count twice). The root becomes terminal when its own envelope and every branch are
done. The crew counts the branches that end in one of its batches together (`Tally`): one write per
root, which also ends the root when they are the last. A root keeps at most
`asya.fans.INLINE_BRANCHES` ids itself; the branches of a fan-out that does not fit are counted in
buckets beside it (`asya.fans`), and the root holds a copy of their counter (`fans`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from asya.envelope import rfc3339, utc_now
from asya.fans import INLINE_BRANCHES, FanCounts, assign, member_terms
from asya.task_record import TERMINAL, Rank, root_ending, root_outcome
from asya.task_table import UNCLAIMED_HOP, TaskTable

_MEMBERS_PER_WRITE = 25  # keeps a count's condition well inside DynamoDB's 4 KB expression limit
# a fan-out root's own ending, kept until its branches end (`own_outcome`: how its own envelope ended)
_OWN = ("outcome", "result", "output", "route", "error", "reason", "actor", UNCLAIMED_HOP)


class BranchCounting(TaskTable):
    def register_branches(self, root_id: str, branch_ids: Iterable[str]) -> dict[str, str]:
        """Add fan-out children to the root before they are sent, so it cannot finish without them:
        in the root's own record while it keeps fewer than `INLINE_BRANCHES`, else in buckets, whose
        counter the root then holds a copy of (`asya.fans`). Returns each branch's bucket, for those
        registered in one (the header they must carry). The same branches registered again (the hop
        run again) go where they went the first time: the root's ids never shrink, so a fan-out that
        did not fit still does not, and one that did is found there."""
        ids = list(dict.fromkeys(branch_ids))
        if not ids:
            return {}
        values = {":ids": set(ids), ":now": rfc3339(utc_now()), ":room": INLINE_BRANCHES - len(ids), ":first": ids[0]}
        kept = "attribute_not_exists(branch_ids) OR size(branch_ids) <= :room OR contains(branch_ids, :first)"
        adding = "ADD branch_ids :ids SET updated_at = :now"
        if len(ids) <= INLINE_BRANCHES and self._update(root_id, adding, kept, values):
            return {}
        assigned = assign(ids)
        self.fans.register(root_id, assigned, utc_now())
        self._copy_fans(root_id, returns="NONE")  # an actor's role may not read the root back
        return assigned

    def _copy_fans(self, root_id: str, returns: Literal["ALL_NEW", "NONE"] = "ALL_NEW") -> dict[str, Any] | None:
        """The root's copy of its fan counter brought up to date; the root as the write left it (empty
        with `returns="NONE"`), None if it held this version or a later one already (or is gone)."""
        counts = self.fans.counts(root_id)
        return self._update_returning(
            root_id,
            "SET fans = :fans, updated_at = :now",
            "attribute_exists(id) AND (attribute_not_exists(fans) OR fans.v < :v)",
            {":fans": counts.as_copy(), ":v": counts.version, ":now": rfc3339(utc_now())},
            {},
            returns=returns,
        )

    def count(
        self,
        root_id: str,
        members: Mapping[str, str],
        seen: Mapping[str, Any] | None = None,
        bucket: str | None = None,
    ) -> None:
        """Count branches that ended (`{member: outcome}`, from a `Tally`) on their root, ending the root
        when they were the last. `seen`: the root as a write of this batch left it; when it shows that
        these members are all the root waits for, one write counts them and ends the root. `bucket`:
        the members are counted there instead (`asya.fans`). Safe to repeat: a member counted before
        is not counted again."""
        if bucket is None and seen is not None and self._count_and_end(root_id, members, seen):
            return
        for chunk in _chunks(sorted(members.items()), _MEMBERS_PER_WRITE):
            if bucket is None:
                self._close_branch(root_id, dict(chunk), {})
            else:
                self._count_in_bucket(root_id, bucket, dict(chunk))

    def _count_in_bucket(self, root_id: str, bucket: str, members: Mapping[str, str]) -> bool:
        """Count `members` in their bucket once; the last of a bucket closes it into the root's counter,
        whose copy on the root is then brought up to date, which ends the root if nothing else is
        open. Whether they were counted now (False: one had been before; each of several is then
        counted on its own). A bucket found complete again (a redelivery of its last count) is closed
        and copied again, which changes nothing if the first delivery got that far."""
        found = self.fans.count(bucket, members)
        counted = found is not None
        if found is None:
            if len(members) > 1:
                for member, outcome in members.items():
                    self._count_in_bucket(root_id, bucket, {member: outcome})
                return False
            found = self.fans.read(bucket)
        if found is None or not found.complete:
            return counted
        if not found.closed:
            self.fans.close(root_id, found, utc_now())
        root = self._copy_fans(root_id)
        if root is not None:
            self._end_if_done(root_id, root)
        return counted

    def _ends_root(self, root_id: str, members: Mapping[str, str], own: Mapping[str, Any]) -> bool:
        """The root's own ending, when its branches have all ended (as they usually have: a fan-out
        sends its own envelope after its branches), counted and ending the root in one write. A
        strongly consistent read tells: it costs a fifth of the write it saves."""
        root = self.get(root_id)
        if root is None:
            return False
        kept = {f"own_{name}": value for name, value in own.items() if name in _OWN and value is not None}
        return self._count_and_end(root_id, members, {**root, **kept})

    def _count_and_end(self, root_id: str, members: Mapping[str, str], seen: Mapping[str, Any]) -> bool:
        """One write that counts `members` and ends the root, if `seen` says they are the last. The
        condition holds it to that: the root is not ended, none of the members is counted, and it has
        as many counted and registered as `seen` shows (a count or a registration since would change a
        size; a redrive takes a failed member off, and nothing adds one back within a batch)."""
        done, branches = set(seen.get("done_ids", ())), set(seen.get("branch_ids", ()))
        fans = FanCounts.of(seen.get("fans"))
        if (
            seen.get("rank", 0) >= Rank.TERMINAL
            or len(members) > _MEMBERS_PER_WRITE
            or done & members.keys()
            or len(done | members.keys()) < len(branches) + 1
            or fans.open
        ):
            return False
        counted = Counter(members.values())
        final = root_outcome(
            {f"n_{outcome}": seen.get(f"n_{outcome}", 0) + counted[outcome] for outcome in TERMINAL}
            | {"fans": seen.get("fans")}
        )
        sets, values, names = self._terminal_sets(final, root_ending(seen, final))
        if seen.get("own_outcome") is not None:  # how the root's own envelope ended, which results show
            values[":own_outcome"] = seen["own_outcome"]
            sets.append("own_outcome = :own_outcome")
        adds, condition = member_terms(members, values)
        as_seen = []
        for name, seen_set in (("done_ids", done), ("branch_ids", branches)):
            if seen_set:
                values[f":seen_{name}"] = len(seen_set)
                as_seen.append(f"size({name}) = :seen_{name}")
            else:
                as_seen.append(f"attribute_not_exists({name})")
        if fans.version:  # no bucket opened or closed since the root was seen
            values[":fans_v"] = fans.version
            as_seen.append("fans.v = :fans_v")
        else:
            as_seen.append("attribute_not_exists(fans)")
        return self._update(
            root_id,
            f"SET {', '.join(sets)} ADD {adds} REMOVE open_shard",
            f"(attribute_not_exists(#r) OR #r < :terminal) AND {' AND '.join(as_seen)} AND {condition}",
            values,
            names=names,
        )

    def _close_branch(self, root_id: str, members: Mapping[str, str], own: dict[str, Any]) -> dict[str, Any] | None:
        """Count `members` (`{member: outcome}`) on the root once, and end the root when they were the
        last; returns the root as the count left it, or None if a member had been counted before (then
        each of several is counted on its own)."""
        values: dict[str, Any] = {":now": rfc3339(utc_now())}
        sets = ["updated_at = :now"]
        for name, value in own.items():  # the root's own envelope: keep its result until the root ends
            if value is not None and name in _OWN:
                values[f":{name}"] = value
                sets.append(f"own_{name} = :{name}")
        adds, condition = member_terms(members, values)
        counted = self._update_returning(root_id, f"ADD {adds} SET {', '.join(sets)}", condition, values, {})
        if counted is None and len(members) > 1:  # a redelivery among them: count the others
            for member, outcome in members.items():
                self._close_branch(root_id, {member: outcome}, {})
            return None
        root = counted or self.get(root_id)  # already counted (a redelivery): finish the root if left undone
        if root is not None:
            self._end_if_done(root_id, root)
        return counted

    def _end_if_done(self, root_id: str, root: Mapping[str, Any]) -> None:
        """End the root if the record as a write left it shows nothing open: its own ids all counted
        and, in the copy of its fan counter, no bucket open. Of the writes that count, the last one
        to land sees that (each returns the record as it left it)."""
        open_ids = len(root.get("branch_ids", ())) + 1 - len(root.get("done_ids", ()))
        if root.get("rank", 0) < Rank.TERMINAL and open_ids <= 0 and not FanCounts.of(root.get("fans")).open:
            final = root_outcome(root)
            self._terminal(root_id, final, root_ending(root, final))


def _chunks(items: list[Any], size: int) -> Iterable[list[Any]]:
    return (items[start : start + size] for start in range(0, len(items), size))
