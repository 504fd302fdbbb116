"""The committed generated modules must match the .proto sources they came from."""

from __future__ import annotations

import importlib
import importlib.util
import pathlib

from google.protobuf import descriptor_pb2
from grpc_tools import protoc

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROTOS = ROOT / "protos"


def test_generated_modules_match_sources(tmp_path: pathlib.Path) -> None:
    sources = sorted(str(p.relative_to(PROTOS)) for p in (PROTOS / "fdb_leaderboard" / "proto").glob("*.proto"))
    assert sources, "no .proto sources found"
    include = pathlib.Path(protoc.__file__).parent / "_proto"
    out = tmp_path / "set.pb"
    assert protoc.main(["protoc", f"-I{PROTOS}", f"-I{include}", f"--descriptor_set_out={out}", *sources]) == 0
    compiled = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    for file in compiled.file:
        _strip_json_names(file)  # protoc adds them to descriptor sets, not to generated code
        module_name = file.name.removesuffix(".proto").replace("/", ".") + "_pb2"
        module = importlib.import_module(module_name)
        committed = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
        assert committed == file, f"{module_name} is stale: run tools/dev/gen_protos.py"


def _strip_json_names(file: descriptor_pb2.FileDescriptorProto) -> None:
    def strip(messages) -> None:
        for message in messages:
            for field in message.field:
                field.ClearField("json_name")
            strip(message.nested_type)

    strip(file.message_type)


def test_the_comments_module_matches_the_sources() -> None:
    spec = importlib.util.spec_from_file_location("gen_protos", ROOT / "tools" / "dev" / "gen_protos.py")
    assert spec is not None and spec.loader is not None
    gen_protos = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_protos)
    from fdb_leaderboard.proto.comments import COMMENTS

    assert gen_protos.comments_of(gen_protos.compiled_with_source_info()) == COMMENTS, (
        "fdb_leaderboard/proto/comments.py is stale: run tools/dev/gen_protos.py"
    )
    assert COMMENTS["fdb_leaderboard.v1.Leaderboard.Top"] == "The best n entries of a window."


def test_the_service_and_the_store_spell_leagues_alike() -> None:
    """The service's Leagues and the stored one are two messages (the service's package must not
    publish the store's), with one encoding: a converter copies one into the other field by field."""
    from fdb_leaderboard.proto import index_pb2
    from fdb_leaderboard.proto import service_pb2 as pb

    def fields(message: object) -> list[tuple[str, int, int]]:
        return [(f.name, f.number, f.type) for f in message.DESCRIPTOR.fields]  # type: ignore[attr-defined]

    assert fields(pb.Leagues) == fields(index_pb2.Leagues)
    stored = index_pb2.Leagues(window_type=2, cohort_size=30, tiers=3, promote=5, demote=4)
    assert pb.Leagues.FromString(stored.SerializeToString()).SerializeToString() == stored.SerializeToString()
