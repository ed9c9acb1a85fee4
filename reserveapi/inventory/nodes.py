"""Reading the node inventory as the service knows it."""

from reserveapi.db import api as db_api
from reserveapi.matcher import spec as spec_mod

SORT_KEYS = db_api.NODE_SORT_KEYS


def get(ident):
    return db_api.get_node(ident)


def list_nodes(filters=None, limit=None, marker=None, sort_key='uuid',
               sort_dir='asc'):
    """Nodes by equality filters; a resource class filter is normalized
    as Nova does, so ``baremetal-gold`` finds ``CUSTOM_BAREMETAL_GOLD``.
    """
    filters = dict(filters or {})
    if filters.get('resource_class'):
        filters['resource_class'] = spec_mod.normalize_resource_class(
            filters['resource_class'])
    return db_api.list_nodes(filters, limit, marker, sort_key, sort_dir)
