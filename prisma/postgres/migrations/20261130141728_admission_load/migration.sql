-- CreateTable
CREATE TABLE "ClientLoad" (
    "clientId" TEXT NOT NULL,
    "windowStart" TIMESTAMP(3),
    "windowCount" INTEGER NOT NULL DEFAULT 0,
    "active" INTEGER NOT NULL DEFAULT 0,
    "pending" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "ClientLoad_pkey" PRIMARY KEY ("clientId")
);

-- CreateTable
CREATE TABLE "GlobalLoad" (
    "id" INTEGER NOT NULL,
    "active" INTEGER NOT NULL,

    CONSTRAINT "GlobalLoad_pkey" PRIMARY KEY ("id")
);

-- Written by hand from here on: Prisma cannot express triggers. (The dollar-quoted bodies need the whole script sent
-- as one query; src/store/database.ts applies migrations that way.)

-- The load as the rows stand, and each client's current rate window carried over from AdmissionCounter.
INSERT INTO "GlobalLoad" ("id", "active")
SELECT 1, count(*) FROM "Operation" WHERE "state" IN ('pending', 'approved', 'executing');

INSERT INTO "ClientLoad" ("clientId", "windowStart", "windowCount", "active", "pending")
SELECT
    c."clientId",
    (SELECT a."windowStart" FROM "AdmissionCounter" a WHERE a."clientId" = c."clientId" ORDER BY a."windowStart" DESC LIMIT 1),
    COALESCE((SELECT a."count" FROM "AdmissionCounter" a WHERE a."clientId" = c."clientId" ORDER BY a."windowStart" DESC LIMIT 1), 0),
    (SELECT count(*) FROM "Operation" o WHERE o."clientId" = c."clientId" AND o."state" IN ('pending', 'approved', 'executing')),
    (SELECT count(*) FROM "Grant" g WHERE g."clientId" = c."clientId" AND g."status" = 'pending')
FROM (SELECT "clientId" FROM "Operation" UNION SELECT "clientId" FROM "Grant" UNION SELECT "clientId" FROM "AdmissionCounter") c;

-- DropTable
DROP TABLE "AdmissionCounter";

-- Active operations (pending, approved, executing), per client and in all, follow every insert, state change and
-- delete. The client's row is changed before the global one, as admission locks them, so the two never deadlock.
CREATE FUNCTION "count_active_operations"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    change integer := 0;
    client text;
BEGIN
    IF TG_OP <> 'INSERT' AND OLD."state" IN ('pending', 'approved', 'executing') THEN
        change := change - 1;
        client := OLD."clientId";
    END IF;
    IF TG_OP <> 'DELETE' AND NEW."state" IN ('pending', 'approved', 'executing') THEN
        change := change + 1;
        client := NEW."clientId";
    END IF;
    IF change <> 0 THEN
        INSERT INTO "ClientLoad" ("clientId", "active") VALUES (client, change)
            ON CONFLICT ("clientId") DO UPDATE SET "active" = "ClientLoad"."active" + change;
        UPDATE "GlobalLoad" SET "active" = "active" + change WHERE "id" = 1;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER "Operation_load" AFTER INSERT OR DELETE OR UPDATE OF "state" ON "Operation"
    FOR EACH ROW EXECUTE FUNCTION "count_active_operations"();

-- Pending approvals per client follow every insert, status change and delete.
CREATE FUNCTION "count_pending_grants"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    change integer := 0;
    client text;
BEGIN
    IF TG_OP <> 'INSERT' AND OLD."status" = 'pending' THEN
        change := change - 1;
        client := OLD."clientId";
    END IF;
    IF TG_OP <> 'DELETE' AND NEW."status" = 'pending' THEN
        change := change + 1;
        client := NEW."clientId";
    END IF;
    IF change <> 0 THEN
        INSERT INTO "ClientLoad" ("clientId", "pending") VALUES (client, change)
            ON CONFLICT ("clientId") DO UPDATE SET "pending" = "ClientLoad"."pending" + change;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER "Grant_load" AFTER INSERT OR DELETE OR UPDATE OF "status" ON "Grant"
    FOR EACH ROW EXECUTE FUNCTION "count_pending_grants"();
