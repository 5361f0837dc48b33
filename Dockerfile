# The service image: the API (`grader serve`) and the workers (`grader worker`) of docker-compose.yml.
# Built with no network, like sandbox/Dockerfile: scripts/build-compose-images.sh prepares debs/ (Debian's
# python3, fetched in a throwaway container) and site-packages/ (the pinned dependencies, installed from
# a wheelhouse on the host) next to a copy of this file, grader/ and problems/.
FROM debian:bookworm-slim

COPY debs/ /tmp/debs/
RUN apt-get install -y -qq --no-install-recommends /tmp/debs/*.deb >/dev/null \
    && rm -rf /tmp/debs /var/lib/apt/lists/* /var/cache/apt/*

COPY site-packages/ /usr/local/lib/python3.11/dist-packages/
RUN python3 -m compileall -q -j 0 /usr/local/lib/python3.11/dist-packages >/dev/null || true \
    && python3 -c "import alembic, celery, docker, fastapi, ml_dtypes, numpy, prometheus_client, psycopg, redis, sqlalchemy, uvicorn"

# Never root: the API faces the network; a worker also holds the Docker socket (see docker-compose.yml).
RUN groupadd -g 10002 grader && useradd -u 10002 -g 10002 -M -d /nonexistent -s /usr/sbin/nologin grader \
    && mkdir -p /var/lib/torchjudge && chown 10002:10002 /var/lib/torchjudge

COPY app/ /opt/torchjudge/
RUN python3 -m compileall -q /opt/torchjudge/grader /opt/torchjudge/sandbox

ENV PYTHONPATH=/opt/torchjudge \
    PYTHONUNBUFFERED=1 \
    GRADER_DATA_DIR=/var/lib/torchjudge \
    GRADER_PROBLEMS_DIR=/opt/torchjudge/problems \
    GRADER_HOST=0.0.0.0
USER 10002:10002
WORKDIR /var/lib/torchjudge
EXPOSE 8000 9100
ENTRYPOINT ["python3", "-m", "grader.cli"]
CMD ["serve"]
