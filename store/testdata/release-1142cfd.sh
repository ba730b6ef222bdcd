# How store/testdata/release-1142cfd.db was made: labserver built from commit 1142cfd
# (git archive 1142cfd | tar -x -C /tmp/old; cd /tmp/old; go build -o labserver ./cmd/labserver),
# served on an empty database and driven over HTTP as below.
set -e
B=http://127.0.0.1:18931
LAB_ADMIN_PASSWORD=fixture-admin-pw LAB_ADDR_LIMITS=off /tmp/old/labserver serve --addr 127.0.0.1:18931 --db /tmp/fx/lab.db --backend none --terminals 0 > /tmp/fx/serve.log 2>&1 &
echo $! > /tmp/fx/pid
for i in $(seq 50); do curl -sf $B/healthz >/dev/null && break; sleep 0.2; done
L="curl -s -b /tmp/fx/learner.jar -c /tmp/fx/learner.jar"
$L -o /dev/null -w "home %{http_code}\n" $B/
$L -o /dev/null -w "lesson %{http_code}\n" "$B/lessons/01-why-rdma"
$L -o /dev/null -w "name %{http_code}\n" -d name="Fixture Learner 甲" $B/me
$L -w "\nquiz1 %{http_code}\n" -H 'Content-Type: application/json' -d '{"answer":["copies"],"lesson":"01-why-rdma"}' "$B/api/quiz/why-rdma/overheads/attempts" | tail -c 200
$L -w "\nquiz2 %{http_code}\n" -H 'Content-Type: application/json' -d '{"answer":["copies","stack","switches"],"lesson":"01-why-rdma"}' "$B/api/quiz/why-rdma/overheads/attempts" | tail -c 100
$L -w "\nrun %{http_code}\n" -H 'Content-Type: application/json' -d '{"experiment":"memlock"}' $B/api/runs | tee /tmp/fx/run.json
$L -o /dev/null -w "complete %{http_code}\n" -X POST "$B/lessons/01-why-rdma/complete"
I="curl -s -b /tmp/fx/ins.jar -c /tmp/fx/ins.jar"
$I -o /dev/null -w "login %{http_code}\n" -d username=admin -d password=fixture-admin-pw $B/instructor/login
$I -o /dev/null -w "class %{http_code}\n" -d name="RDMA 2026 秋" $B/instructor/classes
# then (the class's id 1, its code and the seat's personal code as the pages showed them):
#   curl -b /tmp/fx/ins.jar --data-urlencode $'csv=student_id,name\ns001,张三\ns002,Li Si' $B/instructor/classes/1/roster
#   curl -b /tmp/fx/learner.jar -c /tmp/fx/learner.jar -d code=EQEJU45N -d seat=XTFSYXPR $B/join
#   kill the server (SIGTERM), then: sqlite3 /tmp/fx/lab.db 'PRAGMA wal_checkpoint(TRUNCATE)'
