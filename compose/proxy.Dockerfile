# The front door of docker-compose.yml: Debian's nginx-light, no registry needed.
# scripts/build-compose-images.sh fetches the .deb files in a throwaway container into debs/.
FROM debian:bookworm-slim

COPY debs/ /tmp/debs/
RUN printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d \
    && apt-get install -y -qq --no-install-recommends /tmp/debs/*.deb >/dev/null \
    && rm -rf /tmp/debs /var/lib/apt/lists/* /var/cache/apt/* /usr/sbin/policy-rc.d /etc/nginx/sites-enabled

COPY nginx.conf /etc/torchjudge/nginx.conf
# Never root: it listens on 8080 and writes only its own directory (the pid file, bodies buffered to disk).
RUN install -d -o www-data -g www-data -m 700 /var/cache/torchjudge-proxy
USER www-data
RUN nginx -t -q -e stderr -c /etc/torchjudge/nginx.conf
EXPOSE 8080
HEALTHCHECK --interval=5s --timeout=3s --retries=20 CMD bash -c 'exec 3<>/dev/tcp/127.0.0.1/8080'
CMD ["nginx", "-e", "stderr", "-c", "/etc/torchjudge/nginx.conf", "-g", "daemon off;"]
