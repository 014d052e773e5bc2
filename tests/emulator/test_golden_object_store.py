"""Golden datasets in object storage (docs/golden-format.md, "Object storage"): `--out` and the
dataset arguments take fsspec URLs.  Against a local S3-compatible server (moto's server mode,
started here on 127.0.0.1; never a real service): the objects a run writes are byte for byte
the files the same command writes locally, no object appears under a final name before it is
complete (every upload goes to a temporary key first, the manifest last), `--resume`,
`verify`, `--coverage`, shards and merge work there, and a URL whose library is missing, or a
store that does not answer, is one line with its exit code."""
from __future__ import annotations

import logging
import os
import pathlib
import socket
import subprocess
import sys

import pytest

from emulator.cli import main

moto_server = pytest.importorskip("moto.server")
pytest.importorskip("s3fs")

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARGS = ["--ops", "TADD,TCVT", "--dtypes", "FP16", "--dst-dtypes", "FP32", "--rmodes", "RNE,RTZ", "--sat", "0",
        "--cases", "12", "--seed", "4", "--quiet"]
STREAMS = ["--streams", "--blocks", "2", "--cases", "3", "--group-cases", "1", "--shapes", "r1c8,r3c1",
           "--seed", "4", "--quiet"]
BUCKET = "goldens"


@pytest.fixture(scope="module")
def s3():
    """A moto S3 server on 127.0.0.1 (a free port), the AWS variables pointing at it, one bucket;
    yields an s3fs filesystem on it."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)       # no request log on the tests' stderr
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    with pytest.MonkeyPatch.context() as mp:
        for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                     "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": f"http://{host}:{port}"}.items():
            mp.setenv(k, v)
        import s3fs
        fs = s3fs.S3FileSystem(skip_instance_cache=True, use_listings_cache=False)
        fs.mkdir(BUCKET)
        yield fs
    server.stop()


def _objects(fs, prefix: str) -> dict:
    base = f"{BUCKET}/{prefix}/"
    return {k[len(base):]: fs.cat_file(k) for k in sorted(fs.find(base.rstrip("/")))}


def _tree(folder: pathlib.Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """The same commands' datasets written to local folders."""
    root = tmp_path_factory.mktemp("local")
    assert main(["golden", *ARGS, "--out", str(root / "single")]) == 0
    assert main(["golden", *STREAMS, "--out", str(root / "streams")]) == 0
    return root


@pytest.mark.parametrize("kind, args", [("single", ARGS), ("streams", STREAMS)])
def test_a_dataset_written_to_s3_is_the_local_one_byte_for_byte_and_verifies(s3, local, kind, args, capsys):
    url = f"s3://{BUCKET}/{kind}"
    assert main(["golden", *args, "--out", url]) == 0, capsys.readouterr().err
    assert _objects(s3, kind) == _tree(local / kind)
    capsys.readouterr()
    assert main(["verify", url, "--quiet"]) == 0, capsys.readouterr().err
    assert main(["golden", "--coverage", url]) == 0
    assert main(["verify", url, "--oracle", "--quiet"]) == 0


def test_every_upload_goes_to_a_temporary_key_and_the_manifest_comes_last(s3, local, monkeypatch):
    """Each object reaches its final key by a move from a temporary key beside it (`.NAME.xxxxxxxx.tmp`,
    the pattern --resume removes), never by a write under the final name; manifest.json is the
    last one."""
    import s3fs
    puts, moves = [], []
    real_put, real_mv = s3fs.S3FileSystem.put_file, s3fs.S3FileSystem.mv
    monkeypatch.setattr(s3fs.S3FileSystem, "put_file",
                        lambda self, lpath, rpath, *a, **k: (puts.append(rpath), real_put(self, lpath, rpath, *a, **k))[1])
    monkeypatch.setattr(s3fs.S3FileSystem, "mv",
                        lambda self, src, dst, *a, **k: (moves.append((src, dst)), real_mv(self, src, dst, *a, **k))[1])
    assert main(["golden", *ARGS, "--out", f"s3://{BUCKET}/order"]) == 0
    assert puts == [src for src, _ in moves]
    for src, dst in moves:
        name = dst.rsplit("/", 1)[1]
        assert src.rsplit("/", 1)[0] == dst.rsplit("/", 1)[0]
        assert src.rsplit("/", 1)[1].startswith(f".{name}.") and src.endswith(".tmp")
    finals = [dst.split("/order/", 1)[1] for _, dst in moves]
    assert finals[0] == "generation.json" and finals[-1] == "manifest.json"
    assert sorted(finals) == sorted(_tree(local / "single"))


def test_an_interrupted_run_in_s3_resumes_to_the_same_bytes(s3, local, capsys):
    url = f"s3://{BUCKET}/resume"
    assert main(["golden", *ARGS, "--out", url]) == 0
    s3.rm_file(f"{BUCKET}/resume/manifest.json")
    first = sorted(k for k in s3.find(f"{BUCKET}/resume") if k.endswith(".parquet"))[0]
    s3.rm_file(first)
    folder, name = first.rsplit("/", 1)
    s3.pipe_file(f"{folder}/.{name}.0123abcd.tmp", b"half")            # a killed upload's temporary key
    assert main(["verify", url, "--quiet"]) == 1                          # no manifest: not a dataset yet
    capsys.readouterr()
    assert main(["golden", *ARGS, "--out", url, "--resume"]) == 0
    assert _objects(s3, "resume") == _tree(local / "single")
    assert main(["golden", *ARGS, "--out", url]) == 1                     # not empty: --resume or another place
    assert "is not empty" in capsys.readouterr().err


def test_a_damaged_object_is_refused_by_verify_in_one_line(s3, capsys):
    url = f"s3://{BUCKET}/damaged"
    assert main(["golden", *ARGS, "--out", url]) == 0
    victim = sorted(k for k in s3.find(f"{BUCKET}/damaged") if k.endswith(".parquet"))[1]
    raw = bytearray(s3.cat_file(victim))
    raw[len(raw) // 2] ^= 1
    s3.pipe_file(victim, bytes(raw))
    capsys.readouterr()
    assert main(["verify", url, "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "SHA-256 differs" in err and victim.split("/damaged/", 1)[1] in err


def test_shards_in_s3_merge_into_the_unsharded_dataset(s3, local, capsys):
    for i in range(2):
        assert main(["golden", *ARGS, "--shard", f"{i}/2", "--out", f"s3://{BUCKET}/part-{i}"]) == 0
    assert main(["golden", "merge", f"s3://{BUCKET}/part-0", f"s3://{BUCKET}/part-1",
                 "--out", f"s3://{BUCKET}/merged"]) == 0, capsys.readouterr().err
    assert _objects(s3, "merged") == _tree(local / "single")
    assert main(["golden", "merge", f"s3://{BUCKET}/part-0", f"s3://{BUCKET}/part-1",
                 "--out", str(local / "from-s3")]) == 0
    assert _tree(local / "from-s3") == _tree(local / "single")


def test_a_local_dask_cluster_writes_its_files_straight_to_s3(s3, local):
    assert main(["golden", *ARGS, "--workers", "2", "--out", f"s3://{BUCKET}/dask"]) == 0
    assert _objects(s3, "dask") == _tree(local / "single")


def test_file_urls_are_local_folders(local, tmp_path):
    assert main(["golden", *ARGS, "--out", f"file://{tmp_path}/f"]) == 0
    assert _tree(tmp_path / "f") == _tree(local / "single")
    assert main(["verify", f"file://{tmp_path}/f", "--quiet"]) == 0


def _cli(code: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env})


def test_a_url_whose_library_is_not_installed_is_exit_3_naming_the_extra(tmp_path):
    code = ("import sys; sys.modules['s3fs'] = None\n"        # as if s3fs were not installed
            "from emulator.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    for argv in (["golden", *ARGS, "--out", "s3://b/x"], ["verify", "s3://b/x"]):
        done = _cli(code.replace("sys.argv[1:]", repr(argv)), {})
        assert done.returncode == 3, done
        assert done.stderr.count("\n") == 1 and "tile-emu[s3]" in done.stderr, done.stderr


def test_an_unreachable_store_is_one_line_exit_1(tmp_path):
    with socket.socket() as s:                    # a port on 127.0.0.1 that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_MAX_ATTEMPTS": "1"}
    code = "import sys\nfrom emulator.cli import main\nsys.exit(main(%r))\n"
    done = _cli(code % (["golden", *ARGS, "--out", "s3://b/x"],), env)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "s3://b/x" in done.stderr, done.stderr
    assert "Could not connect" in done.stderr or "connect" in done.stderr.lower()
