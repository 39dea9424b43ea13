import sys
from pathlib import Path

from gateway.settings.reference import markdown_table, with_table

if len(sys.argv) > 1:
    readme = Path(sys.argv[1])
    readme.write_text(with_table(readme.read_text()))
else:
    print(markdown_table())
