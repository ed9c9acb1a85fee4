"""Absolute links to our resources, honouring [api] public_endpoint."""

import pecan

import reserveapi.conf

CONF = reserveapi.conf.CONF


def base_url():
    base = CONF.api.public_endpoint or pecan.request.host_url
    return base.rstrip('/')


def make(path, rel='self'):
    return {'href': '%s/%s' % (base_url(), path.lstrip('/')), 'rel': rel}
