"""The catalogue: every shipped entry validates and cites a source; bad files name file and key."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpuready.catalog.loader import CatalogError, builtin_catalog_dir, user_catalog_dir
from gpuready.tasks.registry import load_catalog
from gpuready.catalog.tables import cpu_table, gpu_table, npu_table

CATALOG = load_catalog()


def test_the_shipped_catalogue_has_at_least_40_text_models_and_three_mixtures_of_experts():
    models = CATALOG.for_task("text-generation")
    assert len(models) >= 40
    assert sum(1 for m in models if m.is_moe) >= 3


def test_every_catalogue_entry_cites_a_source():
    for model in CATALOG.models.values():
        assert model.source.startswith("http"), model.id
    for quant in CATALOG.quants.values():
        assert quant.source, quant.id
    for row in (*gpu_table(), *cpu_table(), *npu_table()):
        assert row.source, row.id


def test_the_hardware_tables_are_large_enough_to_be_useful():
    assert len(gpu_table()) >= 80
    vendors = {row.vendor for row in gpu_table()}
    assert vendors == {"nvidia", "amd", "intel", "apple"}


def test_architecture_numbers_are_consistent():
    for model in CATALOG.for_task("text-generation"):
        assert model.attention_heads % model.kv_heads == 0, model.id
        assert model.active_params <= model.params, model.id
        assert model.sliding_window_layers < model.layers, model.id


def _copy_builtin(tmp_path: Path) -> Path:
    target = tmp_path / "catalog"
    shutil.copytree(builtin_catalog_dir(), target)
    return target


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("layers = 32\n", "layers = -32\n", "'layers' must be a positive integer"),
        ("kv_heads = 8\n", 'kv_heads = "eight"\n', "'kv_heads' must be a positive integer"),
        ('source = "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct/blob/main/config.json"\n', "", "missing 'source'"),
        ('quants = ["Q3_K_M",', 'quants = ["Q9_X",', "unknown quantisation 'Q9_X'"),
    ],
)
def test_a_malformed_entry_names_the_file_the_entry_and_the_key(tmp_path, old, new, message):
    directory = _copy_builtin(tmp_path)
    path = directory / "text-generation.toml"
    text = path.read_text()
    start = text.index('id = "llama-3.1-8b"')
    end = text.index("[[models]]", start)
    path.write_text(text[:start] + text[start:end].replace(old, new, 1) + text[end:])
    with pytest.raises(CatalogError) as error:
        load_catalog(builtin=directory)
    assert "text-generation.toml: models[" in str(error.value)
    assert "(id 'llama-3.1-8b')" in str(error.value)
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("task", "key"),
    [("text-generation", "quants"), ("image-generation", "variants"), ("speech", "variants"), ("document-search", "variants")],
)
def test_an_entry_with_nothing_to_run_is_refused_by_the_loader(tmp_path, task, key):
    # An empty list of quantisations or precisions passed the loader once and crashed every verdict later
    # (min() of an empty sequence, exit 3); now the file, the entry and the key are named at load.
    directory = _copy_builtin(tmp_path)
    path = directory / f"{task}.toml"
    text = path.read_text()
    start = text.index(f"\n{key} = [") + 1
    end = text.index("]", start) + 1
    path.write_text(text[:start] + f"{key} = []" + text[end:])
    with pytest.raises(CatalogError) as error:
        load_catalog(builtin=directory)
    assert f"{task}.toml: models[" in str(error.value)
    assert f"'{key}' must name at least one" in str(error.value)


def test_a_file_for_another_catalogue_schema_is_refused(tmp_path):
    (tmp_path / "mine.toml").write_text('task = "text-generation"\nschema = 2\n')
    with pytest.raises(CatalogError, match=r"mine.toml: 'schema' is 2, but this gpuready reads catalogue schema 1"):
        load_catalog(user=tmp_path)


def test_the_same_id_twice_among_the_users_files_is_refused(tmp_path):
    # A user entry replaces a built-in one by id; two user entries of one id would leave the winner to file order.
    entry = ('[[models]]\nid = "my-model"\nname = "My Model"\nparams = 1.0e9\nlayers = 16\nhidden_size = 2048\n'
             'attention_heads = 16\nkv_heads = 4\ncontext_length = 4096\nquants = ["Q4_K_M"]\n'
             'source = "https://example.org/my-model/config.json"\n')
    (tmp_path / "a.toml").write_text('task = "text-generation"\n' + entry)
    assert load_catalog(user=tmp_path).get("my-model").name == "My Model"
    (tmp_path / "b.toml").write_text('task = "text-generation"\n' + entry)
    with pytest.raises(CatalogError, match=r"b.toml: models\[0\] \(id 'my-model'\): duplicate id 'my-model' \(also .*a.toml"):
        load_catalog(user=tmp_path)


def test_invalid_toml_is_reported_with_the_file(tmp_path):
    directory = _copy_builtin(tmp_path)
    (directory / "text-generation.toml").write_text("[[models]\n")
    with pytest.raises(CatalogError, match="text-generation.toml: not valid TOML"):
        load_catalog(builtin=directory)


def test_a_user_catalogue_adds_and_overrides_models(tmp_path):
    (tmp_path / "mine.toml").write_text(
        'task = "text-generation"\n[[models]]\nid = "my-model"\nname = "My Model"\nparams = 1.0e9\nlayers = 16\n'
        'hidden_size = 2048\nattention_heads = 16\nkv_heads = 4\ncontext_length = 4096\nquants = ["Q4_K_M"]\n'
        'source = "https://example.org/my-model/config.json"\n'
        '[[models]]\nid = "llama-3.1-8b"\nname = "Llama 3.1 8B (my override)"\nparams = 8.03e9\nlayers = 32\n'
        'hidden_size = 4096\nattention_heads = 32\nkv_heads = 8\ncontext_length = 131072\nquants = ["Q4_K_M"]\n'
        'source = "https://example.org/override"\n'
    )
    catalog = load_catalog(user=tmp_path)
    assert catalog.get("my-model").head_dim == 128  # hidden_size / attention_heads
    assert catalog.get("llama-3.1-8b").name == "Llama 3.1 8B (my override)"


def test_a_user_file_for_an_unknown_task_is_rejected(tmp_path):
    (tmp_path / "x.toml").write_text('task = "painting"\n')
    with pytest.raises(CatalogError, match="x.toml: 'task' must be one of"):
        load_catalog(user=tmp_path)


@pytest.mark.parametrize(
    ("platform", "environ", "expected"),
    [
        ("linux", {"HOME": "/home/ada"}, "/home/ada/.config/gpuready/catalog"),
        ("linux", {"HOME": "/home/ada", "XDG_CONFIG_HOME": "/cfg"}, "/cfg/gpuready/catalog"),
        ("darwin", {"HOME": "/Users/ada"}, "/Users/ada/Library/Application Support/gpuready/catalog"),
        ("win32", {"USERPROFILE": "C:/Users/ada", "APPDATA": "C:/Users/ada/AppData/Roaming"}, "C:/Users/ada/AppData/Roaming/gpuready/catalog"),
        ("linux", {"GPUREADY_CATALOG_DIR": "/opt/models"}, "/opt/models"),
    ],
)
def test_the_user_catalogue_lives_in_the_platforms_config_directory(platform, environ, expected):
    assert user_catalog_dir(environ, platform).as_posix() == expected
