-- CreateTable
CREATE TABLE "DecisionKey" (
    "operator" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "requestId" TEXT NOT NULL,
    "decisionHash" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,

    PRIMARY KEY ("operator", "key")
);
