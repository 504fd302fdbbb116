"""The one table of RPCs against the proto's service and the HTTP door's routes: a new RPC cannot be
half-registered (named in the proto but not the table, or routed over HTTP but not said so)."""

from __future__ import annotations

import collections

from fdb_leaderboard import access, rpcs, wire
from fdb_leaderboard.http import rest
from fdb_leaderboard.proto import service_pb2 as pb

METHODS = {method.name: method for method in pb.DESCRIPTOR.services_by_name["Leaderboard"].methods}


def test_every_rpc_of_the_service_has_exactly_one_entry_and_no_entry_names_another() -> None:
    counts = collections.Counter(rpc.name for rpc in rpcs._TABLE)
    assert [name for name, count in counts.items() if count > 1] == [], "an RPC with two entries"
    assert sorted(set(METHODS) - set(rpcs.RPCS)) == [], "add each new RPC to rpcs._TABLE"
    assert sorted(set(rpcs.RPCS) - set(METHODS)) == [], "an entry of rpcs._TABLE names no RPC of the service"
    assert list(rpcs.RPCS) == list(METHODS), "the table follows the proto's order"


def test_each_entry_streams_as_the_proto_says() -> None:
    for name, method in METHODS.items():
        stream = rpcs.RPCS[name].stream
        assert (stream.client_streaming, stream.server_streaming) == (
            method.client_streaming,
            method.server_streaming,
        ), name
        if stream is rpcs.Stream.WATCH:
            watched = METHODS[rpcs.RPCS[name].watches]
            assert not watched.server_streaming and watched.input_type == method.input_type, name
            assert watched.output_type == method.output_type, name
        else:
            assert rpcs.RPCS[name].watches is None, name


def test_the_table_says_which_rpcs_the_rest_routes_serve() -> None:
    routed = {route.rpc for route in rest.ROUTES}
    assert sorted(routed - set(rpcs.RPCS)) == [], "a REST route over no RPC"
    assert sorted(routed - rpcs.names(rest=True)) == [], "set rest=True on the entries these routes serve"
    assert sorted(rpcs.names(rest=True) - routed) == [], "rest=True on an RPC that no route serves"


def test_the_facts_of_each_entry_agree_with_each_other() -> None:
    for rpc in rpcs.RPCS.values():
        if rpc.role is rpcs.Role.READ:
            assert not rpc.writes, f"{rpc.name}: the read role changes nothing stored"
        if rpc.role is rpcs.Role.WRITE:
            assert rpc.writes, rpc.name
        if rpc.pipelined:
            assert rpc.writes and rpc.stream is rpcs.Stream.UNARY and not rpc.heavy, rpc.name
        if rpc.inline or rpc.elsewhere:
            assert not rpc.writes and rpc.stream is rpcs.Stream.UNARY, rpc.name
        if rpc.elsewhere:
            # A reader process serves a read only when it is heavy: always, or by its rows.
            assert rpc.heavy or rpc.rows is not None, rpc.name
            assert any(field.name == "index" for field in METHODS[rpc.name].input_type.fields), rpc.name
        if rpc.inline:
            assert not rpc.heavy, rpc.name


def test_the_views_other_modules_keep_are_the_tables() -> None:
    assert {name: rpc.role for name, rpc in rpcs.RPCS.items()} == access.ROLE_BY_METHOD
    # The writes whose answers carry their commit version are the ones the pipeline commits.
    assert rpcs.names(pipelined=True) == wire.SCORE_WRITES
    assert access.Role is rpcs.Role


def test_the_servicer_has_a_handler_for_every_rpc_the_dispatcher_does_not_serve_itself() -> None:
    from fdb_leaderboard.proto import service_pb2_grpc as pb_grpc
    from fdb_leaderboard.service import LeaderboardService

    unimplemented = {
        name for name in METHODS if getattr(LeaderboardService, name) is getattr(pb_grpc.LeaderboardServicer, name)
    }
    # Watched ranks and window-end events are streams the dispatcher runs from the servicer's reads.
    assert unimplemented == rpcs.names(stream=rpcs.Stream.WATCH) | rpcs.names(stream=rpcs.Stream.EVENTS)
