# PostgreSQL for docker-compose.yml, from Debian's postgresql-15: no registry is needed.
# scripts/build-compose-images.sh fetches the .deb files in a throwaway container into debs/.
FROM debian:bookworm-slim

COPY debs/ /tmp/debs/
# No cluster from the package (the entry point creates one in the volume) and no server started.
RUN mkdir -p /etc/postgresql-common/createcluster.d \
    && echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/torchjudge.conf \
    && printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d \
    && apt-get install -y -qq --no-install-recommends /tmp/debs/*.deb >/dev/null \
    && rm -rf /tmp/debs /var/lib/apt/lists/* /var/cache/apt/* /usr/sbin/policy-rc.d \
    && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
    && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql \
    && chmod 700 /var/lib/postgresql/data

COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint.sh
ENV PATH=/usr/lib/postgresql/15/bin:$PATH \
    PGDATA=/var/lib/postgresql/data
USER postgres
VOLUME /var/lib/postgresql/data
EXPOSE 5432
HEALTHCHECK --interval=5s --timeout=3s --retries=20 CMD pg_isready -q -h 127.0.0.1 -U "$POSTGRES_USER" -d "$POSTGRES_DB"
ENTRYPOINT ["/usr/local/bin/postgres-entrypoint.sh"]
