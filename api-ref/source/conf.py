"""Sphinx configuration for the reserveapi API reference."""

extensions = ['os_api_ref', 'openstackdocstheme']

html_theme = 'openstackdocs'
html_theme_options = {'sidebar_mode': 'toc'}
openstackdocs_repo_name = 'openstack/reserveapi'
openstackdocs_bug_project = 'reserveapi'
openstackdocs_bug_tag = 'api-ref'
openstackdocs_auto_name = False

project = 'Reservation API Reference'
copyright = '2026, reserveapi developers'
master_doc = 'index'
source_suffix = {'.rst': 'restructuredtext'}
pygments_style = 'native'
exclude_patterns = ['samples']
