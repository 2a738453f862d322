-- CreateTable
CREATE TABLE "DecisionKey" (
    "operator" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "requestId" TEXT NOT NULL,
    "decisionHash" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "DecisionKey_pkey" PRIMARY KEY ("operator","key")
);
