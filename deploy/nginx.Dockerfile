# The reverse proxy of docker-compose.yml: Debian's nginx with deploy/nginx.conf.
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends nginx \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /var/lib/nginx/body /var/lib/nginx/proxy
COPY deploy/nginx.conf /etc/nginx/nginx.conf
EXPOSE 8000
CMD ["nginx", "-g", "daemon off;"]
