-- CreateTable
CREATE TABLE "ClientLoad" (
    "clientId" TEXT NOT NULL PRIMARY KEY,
    "windowStart" DATETIME,
    "windowCount" INTEGER NOT NULL DEFAULT 0,
    "active" INTEGER NOT NULL DEFAULT 0,
    "pending" INTEGER NOT NULL DEFAULT 0
);

-- CreateTable
CREATE TABLE "GlobalLoad" (
    "id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "active" INTEGER NOT NULL
);

-- Written by hand from here on: Prisma cannot express triggers.

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
PRAGMA foreign_keys=off;
DROP TABLE "AdmissionCounter";
PRAGMA foreign_keys=on;

-- Active operations (pending, approved, executing), per client and in all, follow every insert, state change and delete.
CREATE TRIGGER "Operation_load_insert" AFTER INSERT ON "Operation"
WHEN NEW."state" IN ('pending', 'approved', 'executing')
BEGIN
    INSERT OR IGNORE INTO "ClientLoad" ("clientId") VALUES (NEW."clientId");
    UPDATE "ClientLoad" SET "active" = "active" + 1 WHERE "clientId" = NEW."clientId";
    UPDATE "GlobalLoad" SET "active" = "active" + 1 WHERE "id" = 1;
END;

CREATE TRIGGER "Operation_load_update" AFTER UPDATE OF "state" ON "Operation"
WHEN (OLD."state" IN ('pending', 'approved', 'executing')) <> (NEW."state" IN ('pending', 'approved', 'executing'))
BEGIN
    INSERT OR IGNORE INTO "ClientLoad" ("clientId") VALUES (NEW."clientId");
    UPDATE "ClientLoad" SET "active" = "active" + (CASE WHEN NEW."state" IN ('pending', 'approved', 'executing') THEN 1 ELSE -1 END)
     WHERE "clientId" = NEW."clientId";
    UPDATE "GlobalLoad" SET "active" = "active" + (CASE WHEN NEW."state" IN ('pending', 'approved', 'executing') THEN 1 ELSE -1 END)
     WHERE "id" = 1;
END;

CREATE TRIGGER "Operation_load_delete" AFTER DELETE ON "Operation"
WHEN OLD."state" IN ('pending', 'approved', 'executing')
BEGIN
    UPDATE "ClientLoad" SET "active" = "active" - 1 WHERE "clientId" = OLD."clientId";
    UPDATE "GlobalLoad" SET "active" = "active" - 1 WHERE "id" = 1;
END;

-- Pending approvals per client follow every insert, status change and delete.
CREATE TRIGGER "Grant_load_insert" AFTER INSERT ON "Grant"
WHEN NEW."status" = 'pending'
BEGIN
    INSERT OR IGNORE INTO "ClientLoad" ("clientId") VALUES (NEW."clientId");
    UPDATE "ClientLoad" SET "pending" = "pending" + 1 WHERE "clientId" = NEW."clientId";
END;

CREATE TRIGGER "Grant_load_update" AFTER UPDATE OF "status" ON "Grant"
WHEN (OLD."status" = 'pending') <> (NEW."status" = 'pending')
BEGIN
    INSERT OR IGNORE INTO "ClientLoad" ("clientId") VALUES (NEW."clientId");
    UPDATE "ClientLoad" SET "pending" = "pending" + (CASE WHEN NEW."status" = 'pending' THEN 1 ELSE -1 END)
     WHERE "clientId" = NEW."clientId";
END;

CREATE TRIGGER "Grant_load_delete" AFTER DELETE ON "Grant"
WHEN OLD."status" = 'pending'
BEGIN
    UPDATE "ClientLoad" SET "pending" = "pending" - 1 WHERE "clientId" = OLD."clientId";
END;
