from reserveapi.conf import ksa

GROUP = 'nova'
SERVICE_TYPE = 'compute'


def register_opts(conf):
    ksa.register_opts(conf, GROUP, SERVICE_TYPE)


def list_opts():
    return {GROUP: ksa.list_opts(GROUP, SERVICE_TYPE)}
