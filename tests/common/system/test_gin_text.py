"""common/system/gin_text.py: bindings under moved names read as their names today, in text and in
every file gin reads (included ones too), and gin's file readers put back afterwards."""
import tokenize

import gin
import pytest

from common.system import gin_text


@gin.configurable
def _moved_toy(horizon=1, other=0):
    return horizon, other


MOVED = {'_moved_toy.t_max': '_moved_toy.horizon'}


def test_read_moved_renames_only_bindings_of_the_old_name():
    text = ('_moved_toy.t_max = 3\n  _moved_toy.t_max=4\n# _moved_toy.t_max = 5\n'
            '_moved_toy.other = 6  # t_max\nX.t_max_2 = 1\n')
    assert gin_text.read_moved(text, MOVED) == (
        '_moved_toy.horizon = 3\n  _moved_toy.horizon=4\n# _moved_toy.t_max = 5\n'
        '_moved_toy.other = 6  # t_max\nX.t_max_2 = 1\n')
    assert gin_text.binds(text, '_moved_toy.t_max')
    assert not gin_text.binds('# _moved_toy.t_max = 5\n', '_moved_toy.t_max')


def test_an_included_file_binding_a_moved_name_is_read_as_the_new_one(tmp_path):
    inner = tmp_path / 'inner.gin'
    inner.write_text('_moved_toy.t_max = 7\n')
    outer = tmp_path / 'outer.gin'
    outer.write_text(f"include '{inner}'\n_moved_toy.other = 2\n")
    readers = list(gin.config._FILE_READERS)  # pylint: disable=protected-access
    gin.clear_config()
    try:
        with gin_text.files_read_moved(MOVED):
            gin.parse_config_files_and_bindings([str(outer)], [])
        assert _moved_toy() == (7, 2)
    finally:
        gin.clear_config()
    assert gin.config._FILE_READERS == readers  # pylint: disable=protected-access


def test_the_file_readers_are_put_back_when_parsing_fails(tmp_path):
    bad = tmp_path / 'bad.gin'
    bad.write_text('_moved_toy.t_max = (\n')
    readers = list(gin.config._FILE_READERS)  # pylint: disable=protected-access
    gin.clear_config()
    with pytest.raises(tokenize.TokenError):
        with gin_text.files_read_moved(MOVED):
            gin.parse_config_files_and_bindings([str(bad)], [])
    gin.clear_config()
    assert gin.config._FILE_READERS == readers  # pylint: disable=protected-access
