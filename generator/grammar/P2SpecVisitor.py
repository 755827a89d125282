# Generated from generator/grammar/P2Spec.g4 by ANTLR 4.13.2
from antlr4 import *
if "." in __name__:
    from .P2SpecParser import P2SpecParser
else:
    from P2SpecParser import P2SpecParser

# This class defines a complete generic visitor for a parse tree produced by P2SpecParser.

class P2SpecVisitor(ParseTreeVisitor):

    # Visit a parse tree produced by P2SpecParser#spec.
    def visitSpec(self, ctx:P2SpecParser.SpecContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by P2SpecParser#decl.
    def visitDecl(self, ctx:P2SpecParser.DeclContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by P2SpecParser#recordDecl.
    def visitRecordDecl(self, ctx:P2SpecParser.RecordDeclContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by P2SpecParser#fieldDecl.
    def visitFieldDecl(self, ctx:P2SpecParser.FieldDeclContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by P2SpecParser#fieldType.
    def visitFieldType(self, ctx:P2SpecParser.FieldTypeContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by P2SpecParser#containerDecl.
    def visitContainerDecl(self, ctx:P2SpecParser.ContainerDeclContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by P2SpecParser#equation.
    def visitEquation(self, ctx:P2SpecParser.EquationContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by P2SpecParser#layerArgs.
    def visitLayerArgs(self, ctx:P2SpecParser.LayerArgsContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by P2SpecParser#paramList.
    def visitParamList(self, ctx:P2SpecParser.ParamListContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by P2SpecParser#param.
    def visitParam(self, ctx:P2SpecParser.ParamContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by P2SpecParser#value.
    def visitValue(self, ctx:P2SpecParser.ValueContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by P2SpecParser#relationshipDecl.
    def visitRelationshipDecl(self, ctx:P2SpecParser.RelationshipDeclContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by P2SpecParser#relEnd.
    def visitRelEnd(self, ctx:P2SpecParser.RelEndContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by P2SpecParser#findDecl.
    def visitFindDecl(self, ctx:P2SpecParser.FindDeclContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by P2SpecParser#findKey.
    def visitFindKey(self, ctx:P2SpecParser.FindKeyContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by P2SpecParser#cursorDecl.
    def visitCursorDecl(self, ctx:P2SpecParser.CursorDeclContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by P2SpecParser#orExpr.
    def visitOrExpr(self, ctx:P2SpecParser.OrExprContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by P2SpecParser#andExpr.
    def visitAndExpr(self, ctx:P2SpecParser.AndExprContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by P2SpecParser#notExpr.
    def visitNotExpr(self, ctx:P2SpecParser.NotExprContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by P2SpecParser#comparison.
    def visitComparison(self, ctx:P2SpecParser.ComparisonContext):
        return self.visitChildren(ctx)


    # Visit a parse tree produced by P2SpecParser#operand.
    def visitOperand(self, ctx:P2SpecParser.OperandContext):
        return self.visitChildren(ctx)



del P2SpecParser