#!/bin/sh
# Installs Debian's chromium for the JupyterLab browser test, if it is missing and we can.
# Never fails the build: the browser test skips with a clear message when there is none.
command -v chromium >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian chromium for the browser test (apt-get)..."
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
        || echo "could not install chromium: the browser test will be skipped"
fi
exit 0
