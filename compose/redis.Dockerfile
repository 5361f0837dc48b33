# Redis for docker-compose.yml (the Celery broker), from Debian's redis-server: no registry is needed.
# scripts/build-compose-images.sh fetches the .deb files in a throwaway container into debs/.
FROM debian:bookworm-slim

COPY debs/ /tmp/debs/
# policy-rc.d: the package must not try to start a server during the build.
RUN printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d \
    && apt-get install -y -qq --no-install-recommends /tmp/debs/*.deb >/dev/null \
    && rm -rf /tmp/debs /var/lib/apt/lists/* /var/cache/apt/* /usr/sbin/policy-rc.d \
    && mkdir -p /data && chown redis:redis /data

COPY redis-entrypoint.sh /usr/local/bin/redis-entrypoint.sh
USER redis
WORKDIR /data
VOLUME /data
EXPOSE 6379
# A password always (REDIS_PASSWORD), although the port is reachable only on the compose network.
HEALTHCHECK --interval=5s --timeout=3s --retries=10 CMD REDISCLI_AUTH="$REDIS_PASSWORD" redis-cli ping | grep -q PONG
ENTRYPOINT ["/usr/local/bin/redis-entrypoint.sh"]
