import pbr.version

version_info = pbr.version.VersionInfo('reserveapi')


def version_string():
    return version_info.version_string()
