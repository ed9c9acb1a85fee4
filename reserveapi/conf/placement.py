from reserveapi.conf import ksa

GROUP = 'placement'
SERVICE_TYPE = 'placement'


def register_opts(conf):
    ksa.register_opts(conf, GROUP, SERVICE_TYPE)


def list_opts():
    return {GROUP: ksa.list_opts(GROUP, SERVICE_TYPE)}
