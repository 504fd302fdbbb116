"""Indexes and the store: creating, listing, dropping, policies, windows, sub-directories, stored formats."""

from __future__ import annotations

import random
import time
from typing import Any

import grpc

from ... import formats, wire
from ...index import IndexSettings, Operations, plan_ahead
from ...proto import index_pb2
from ...proto import service_pb2 as pb
from .. import convert, recreate
from ..catalog import writes_paused
from .calling import CallContext, Handlers, actor_of, before_deadline, rpc_handler


class IndexHandlers(Handlers):
    """The handlers of indexes and the store."""

    @rpc_handler
    def CreateIndex(self, request: pb.CreateIndexRequest, context: CallContext) -> pb.CreateIndexResponse:
        settings = convert.settings_from_proto(request.options, request.reference_layout)
        maintenance = convert.maintenance_from_proto(request.maintenance)
        # The policy's current windows come with the index, so its first score is ranked in them.
        windows = plan_ahead(
            convert.policy_now(maintenance),
            convert.regular_windows(maintenance),
            maintenance.horizon,
            maintenance.certain_within,
            random.Random(),
            convert.calendar_periods(maintenance),
        )
        all_time = request.all_time if request.HasField("all_time") else True
        _, added = self.catalog.create(request.name, settings, maintenance, all_time, windows, actor_of(context))
        if added is None:  # it exists, with these options: the boards asked for join its policy
            return pb.CreateIndexResponse(
                created=False,
                added=[wire.window_to_proto(w) for w in self._add_boards(request.name, request.maintenance, context)],
            )
        return pb.CreateIndexResponse(created=True, added=[wire.window_to_proto(w) for w in added])

    def _add_boards(self, name: str, asked: pb.MaintenancePolicy, context: CallContext) -> list[Any]:
        """Add the boards and regular windows of ``asked`` that index ``name`` lacks to its policy,
        with their current windows (filled from stored scores by the server's maintenance)."""

        def grown(stored: index_pb2.MaintenancePolicy) -> index_pb2.MaintenancePolicy:
            merged = recreate.policy_with_asked(name, stored, asked)
            return stored if merged == stored else convert.maintenance_from_proto(convert.maintenance_to_proto(merged))

        policy = self.catalog.grow_maintenance(name, grown, actor_of(context))
        if policy is None:
            return []
        added = self._index(name).keep_ahead(
            convert.policy_now(policy),
            convert.regular_windows(policy),
            policy.horizon,
            policy.certain_within,
            calendar=convert.calendar_periods(policy),
            actor=actor_of(context),
        )
        self._fill_soon(added)
        return list(added)

    @rpc_handler
    def ListIndexes(self, request: pb.ListIndexesRequest, context: CallContext) -> pb.ListIndexesResponse:
        now = time.time()
        listed = self.catalog.list()
        return pb.ListIndexesResponse(
            indexes=[
                pb.IndexInfo(
                    name=name,
                    options=convert.settings_to_proto(IndexSettings.from_proto(entry.options)),
                    maintenance=convert.maintenance_to_proto(entry.maintenance),
                    writes_paused=writes_paused(entry, now),
                    format=convert.index_format_to_proto(stored.version, stored.recorded, stored.upgrade),
                )
                for (name, entry), stored in zip(listed, self.upgrades.index_formats(listed), strict=True)
            ]
        )

    @rpc_handler
    def DropIndex(self, request: pb.DropIndexRequest, context: grpc.ServicerContext) -> pb.DropIndexResponse:
        self.catalog.drop(request.index, actor=actor_of(context))
        self.window_events.forget_index(request.index)
        return pb.DropIndexResponse()

    @rpc_handler
    def SetMaintenancePolicy(
        self, request: pb.SetMaintenancePolicyRequest, context: CallContext
    ) -> pb.SetMaintenancePolicyResponse:
        self.catalog.set_maintenance(
            request.index, convert.maintenance_from_proto(request.maintenance), actor_of(context)
        )
        return pb.SetMaintenancePolicyResponse()

    @rpc_handler
    def UpdateWindows(self, request: pb.UpdateWindowsRequest, context: CallContext) -> pb.UpdateWindowsResponse:
        index = self._index(request.index)
        update = convert.window_update_from_proto(request)
        result = index.update_windows(update, actor_of(context))
        self._fill_soon(result.filling or result.added)
        return pb.UpdateWindowsResponse(
            changed=result.changed,
            added=[wire.window_to_proto(w) for w in result.added],
            deleted=[wire.window_to_proto(w) for w in result.deleted],
            filling=[wire.window_to_proto(w) for w in result.filling],
        )

    @rpc_handler
    def ListWindows(self, request: pb.ListWindowsRequest, context: CallContext) -> pb.ListWindowsResponse:
        index = self._index(request.index)

        def describe(ops: Operations) -> pb.ListWindowsResponse:
            directory = ops.txn.directory()
            response = pb.ListWindowsResponse(exists=directory is not None)
            if directory is not None:
                response.update_timestamp = directory.update_timestamp
                response.high_score_first = directory.high_score_first
                only = request.window_type if request.HasField("window_type") else None
                for window in directory.windows:
                    if only is not None and window.type != only:
                        continue
                    message = response.windows.add()
                    message.CopyFrom(wire.window_to_proto(window))
                    if window.filling:  # how far the server's background fill got
                        state = ops.txn.fill_state(window)
                        message.records_processed = state.records_processed
                        message.entries_ranked = state.entries_ranked
                        if state.records_total is not None:
                            message.records_total = state.records_total
            latest = ops.txn.latest_timestamp()
            if latest is not None:
                response.latest_timestamp = latest
            trimmed = ops.txn.trimmed_before()
            if trimmed is not None:
                response.trimmed_before = trimmed
            stored = ops.txn.options().format
            version = stored or formats.UNRECORDED_INDEX
            response.format.CopyFrom(convert.index_format_to_proto(version, bool(stored), ops.upgrader.state()))
            return response

        return index.read(describe)

    @rpc_handler
    def SaveSubDirectory(
        self, request: pb.SaveSubDirectoryRequest, context: CallContext
    ) -> pb.SaveSubDirectoryResponse:
        self._index(request.index).save_sub_directory(
            wire.items_from_proto(request.group), request.high_score_first, actor_of(context)
        )
        return pb.SaveSubDirectoryResponse()

    @rpc_handler
    def ListSubDirectories(
        self, request: pb.ListSubDirectoriesRequest, context: CallContext
    ) -> pb.ListSubDirectoriesResponse:
        found = self._index(request.index).sub_directories()
        return pb.ListSubDirectoriesResponse(
            sub_directories=[
                pb.SubDirectory(group=wire.items_to_proto(group), high_score_first=hsf) for group, hsf in found.items()
            ]
        )

    @rpc_handler
    def GetStoreStatus(self, request: pb.GetStoreStatusRequest, context: CallContext) -> pb.StoreStatus:
        return convert.status_to_proto(self.upgrades.status())

    @rpc_handler
    def UpgradeStore(self, request: pb.UpgradeStoreRequest, context: CallContext) -> pb.UpgradeStoreResponse:
        status, done = self.upgrades.upgrade_store(before_deadline(context), actor_of(context))
        return pb.UpgradeStoreResponse(status=convert.status_to_proto(status), done=done)

    @rpc_handler
    def UpgradeIndex(self, request: pb.UpgradeIndexRequest, context: CallContext) -> pb.UpgradeIndexResponse:
        progress = self.upgrades.upgrade_index(
            request.index, before_deadline(context), actor_of(context), request.max_records or 200, request.max_batches
        )
        recorded, state = self._index(request.index).upgrade_state()
        return pb.UpgradeIndexResponse(
            format=convert.index_format_to_proto(progress.format, bool(recorded), state),
            records_processed=progress.records_processed,
            heads_changed=progress.heads_changed,
            done=progress.done,
        )
