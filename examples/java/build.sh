#!/usr/bin/env bash
# Builds the published experiment's own servers, Netty and Tomcat, from Debian's packages only:
#   apt-get install -y openjdk-17-jdk-headless libnetty-java libtomcat10-java
#   examples/java/build.sh [OUT [LAUNCHER=CLASS ...]]        (default OUT: examples/java/build)
# OUT gets the classes of the *.java beside this script, and a launcher per LAUNCHER=CLASS, OUT/LAUNCHER, that
# execs java on the main class CLASS with the classpath (so the launcher's PID is the JVM's). The default
# launchers are the servers', OUT/nettyserver and OUT/tomcatserver; other Java programs against the same jars
# (examples/services/shop) are built by copying this script beside their sources and naming their launchers.
# No Maven or Gradle: javac over the jars in /usr/share/java.
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
out=${1:-$src/build}
shift || true
launchers=("$@")
[ ${#launchers[@]} -gt 0 ] || launchers=(nettyserver=bystander.NettyServer tomcatserver=bystander.TomcatServer)
for l in "${launchers[@]}"; do
  [[ $l =~ ^[A-Za-z0-9_-]+=[A-Za-z_][A-Za-z0-9_.$]*$ ]] ||
    { echo "build.sh: $l is not LAUNCHER=CLASS (a file name and a main class, e.g. shopserver=shop.ShopServer)" >&2; exit 2; }
done
jars=${BYSTANDER_JAVA_JARS:-/usr/share/java}
need() { command -v "$1" >/dev/null 2>&1 || { echo "build.sh: $1 is missing: apt-get install -y openjdk-17-jdk-headless" >&2; exit 3; }; }
need javac
need java
netty=(netty-common netty-buffer netty-resolver netty-transport netty-codec netty-codec-http)
tomcat=(tomcat10-servlet-api tomcat10-annotations-api tomcat10-el-api tomcat10-jaspic-api tomcat10-api tomcat10-juli
  tomcat10-util tomcat10-util-scan tomcat10-coyote tomcat10-catalina)
cp=""
for j in "${netty[@]}" "${tomcat[@]}"; do
  if [ ! -f "$jars/$j.jar" ]; then
    echo "build.sh: $jars/$j.jar is missing: apt-get install -y libnetty-java libtomcat10-java" >&2
    exit 3
  fi
  cp="$cp${cp:+:}$jars/$j.jar"
done
# --db-url (the kit's --block-mode postgres) needs HikariCP, the PostgreSQL JDBC driver and slf4j's API at run
# time only (found by reflection): on the launchers' classpath when installed
# (apt-get install -y libhikaricp-java libpostgresql-jdbc-java).
runcp=$cp
for j in HikariCP postgresql slf4j-api slf4j-nop; do
  [ -f "$jars/$j.jar" ] && runcp="$runcp:$jars/$j.jar"
done
mkdir -p "$out/classes"
# The build ends with whoever started it: when that process is gone (the kit's run killed with kill -9, say),
# a watcher ends javac, and no launcher is written after it.
parent=$PPID
javac -Xlint:deprecation -encoding UTF-8 --release 17 -d "$out/classes" -cp "$cp" "$src"/*.java &
jpid=$!
( while kill -0 "$jpid" 2>/dev/null; do
    if ! kill -0 "$parent" 2>/dev/null; then kill "$jpid" 2>/dev/null; exit 0; fi
    sleep 0.2
  done ) &
wait "$jpid"
kill -0 "$parent" 2>/dev/null || exit 1
built=()
for l in "${launchers[@]}"; do
  name=${l%%=*} cls=${l#*=}
  printf '#!/bin/sh\nexec java -cp "%s:%s" %s "$@"\n' "$out/classes" "$runcp" "$cls" > "$out/$name.tmp"
  chmod +x "$out/$name.tmp"
  mv "$out/$name.tmp" "$out/$name"
  built+=("$out/$name")
done
echo "build.sh: built ${built[*]}"
